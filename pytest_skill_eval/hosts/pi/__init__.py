"""The Pi coding agent CLI as a subject host.

`host` implements the seam (isolated agent dir, argv, environment, the conversation), `config`
writes its settings.json and models.json, `binary` finds and checks Pi, `driver` talks json and
rpc, `events` turns Pi's events into the neutral observation, `extensions` are package data.
"""
