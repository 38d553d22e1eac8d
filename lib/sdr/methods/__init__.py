"""Each method's recipe: sampling, objective and paper defaults, built from the shared modules."""
