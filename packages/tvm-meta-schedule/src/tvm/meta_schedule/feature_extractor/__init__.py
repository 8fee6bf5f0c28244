"""Feature extractors: a candidate schedule -> the numbers a cost model learns from."""

from .feature_extractor import FeatureExtractor
from .per_store_feature import (
    FEATURE_NAMES, FEATURES, NUM_FEATURES, PerStoreFeature, extract_features,
)

__all__ = ["FeatureExtractor", "PerStoreFeature", "FEATURES", "FEATURE_NAMES", "NUM_FEATURES",
           "extract_features"]
