"""Finding inputs for a run: what each parameter takes, and where values come from."""
