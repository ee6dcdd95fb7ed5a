"""Loop features as pytest plug-in objects: each module one feature, with its own hooks."""
