"""Scripted model traffic: script loading, wire renderers, the loopback server, Pi config."""
