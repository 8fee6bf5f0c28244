"""TIR analyses (each module holds one analysis; this package re-exports them)."""

from .verify import VerifyWellFormed, WellFormedError, verify_well_formed
