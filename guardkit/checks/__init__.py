"""The per-call steps and local checks (paths, egress, provenance, runtime) of a guarded tool."""
