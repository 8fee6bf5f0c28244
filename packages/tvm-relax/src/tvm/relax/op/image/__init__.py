"""Image operators (``relax.image.*``)."""

from .grid_sample import GridSampleAttrs, grid_sample
from .resize import Resize1DAttrs, Resize2DAttrs, Resize3DAttrs, resize1d, resize2d, resize3d

__all__ = ["resize1d", "resize2d", "resize3d", "Resize1DAttrs", "Resize2DAttrs",
           "Resize3DAttrs", "grid_sample", "GridSampleAttrs"]
