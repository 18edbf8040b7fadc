"""How a run is made and computed: options, sampling, estimates, budget, the run loop and background runs."""
