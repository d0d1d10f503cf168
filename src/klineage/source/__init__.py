"""The source model: parsing (tree-sitter), the feature catalogue and detectors, and the rewrite
passes that remove or insert one feature at a precise site (DESIGN.md §5)."""

from klineage.source.model import CATEGORIES, Edit, FeatureHit, FeatureInfo, Site, unified_diff

__all__ = ["CATEGORIES", "Edit", "FeatureHit", "FeatureInfo", "Site", "unified_diff"]
