"""Model traffic: scripts and cassettes, wire renderers and parsers, the loopback server with
its replay and recording routes, and the Pi config that points Pi at a route."""
