"""The soak (`python3 -m mpmng_py.soak`): mixed load under restarts, deploys
and killed children."""
