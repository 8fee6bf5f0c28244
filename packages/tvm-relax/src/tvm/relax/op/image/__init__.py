"""Image operators (``relax.image.*``)."""

from .resize import Resize2DAttrs, resize2d

__all__ = ["resize2d", "Resize2DAttrs"]
