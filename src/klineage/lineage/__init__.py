"""Lineages: the backward walk, re-derivation, and the Transition/Lineage records."""

from klineage.lineage._audit import audit_removal
from klineage.lineage.model import Lineage, Rederivation, Rejection, Transition
from klineage.lineage.rederive import rederive_lineage
from klineage.lineage.walk import WalkLimits, backward_walk

__all__ = ["Lineage", "Rederivation", "Rejection", "Transition", "WalkLimits", "audit_removal",
           "backward_walk", "rederive_lineage"]
