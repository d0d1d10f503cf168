"""The source model: parsing (tree-sitter), the feature catalogue and detectors, compiled-output
evidence, and the rewrite passes that remove or insert one feature at a precise site (DESIGN.md §5)."""

from klineage.source.compiled import compiled_evidence
from klineage.source.features import CATALOGUE, FAST_PATH_FEATURES, detect, feature_region, present
from klineage.source.model import CATEGORIES, Edit, FeatureHit, FeatureInfo, Site, unified_diff
from klineage.source.passes import (
    DEPENDS_ON,
    Refused,
    insertion,
    insertion_edits,
    removal_edits,
    removal_order,
)

__all__ = [
    "CATALOGUE", "CATEGORIES", "DEPENDS_ON", "FAST_PATH_FEATURES", "Edit", "FeatureHit", "FeatureInfo",
    "Refused", "Site",
    "compiled_evidence", "detect", "feature_region", "insertion", "insertion_edits", "present",
    "removal_edits", "removal_order", "unified_diff",
]
