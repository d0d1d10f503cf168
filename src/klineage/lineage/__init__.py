"""Lineages: the backward walk, re-derivation, and the Transition/Lineage records."""

from klineage.lineage._audit import audit_removal
from klineage.lineage.model import (
    Lineage,
    ProposalRejected,
    Rederivation,
    Rederived,
    Rejection,
    StepAccepted,
    Transition,
    WalkStopped,
)
from klineage.lineage.rederive import rederive_lineage
from klineage.lineage.walk import WalkLimits, backward_walk

__all__ = ["Lineage", "ProposalRejected", "Rederivation", "Rederived", "Rejection", "StepAccepted",
           "Transition", "WalkLimits", "WalkStopped", "audit_removal", "backward_walk",
           "rederive_lineage"]
