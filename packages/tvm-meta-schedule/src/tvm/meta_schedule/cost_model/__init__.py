"""Cost models: XGBModel (default; extra ``tvm-meta-schedule[xgboost]``), RandomModel."""

from .cost_model import CostModel
from .metric import spearman, top_k_recall
from .random_model import RandomModel
from .xgb_model import XGBModel

__all__ = ["CostModel", "RandomModel", "XGBModel", "spearman", "top_k_recall"]
