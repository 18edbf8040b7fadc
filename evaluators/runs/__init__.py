"""How a run is made and computed: its lifecycle (spec -> prepare -> start; resume), which samples it judges (planning,
sampling), estimates, budget, the run loop (engine) and background runs (runner)."""
