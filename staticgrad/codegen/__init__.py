"""Code generators: render a specialized graph as source for one backend."""
