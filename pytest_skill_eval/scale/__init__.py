"""Beyond one machine: a plan pins an invocation, shards run its work units, a merge joins them.

plan.py    `skill-eval plan`: result ids, fingerprints, pins, selection, the work units
shard.py   a pytest run of one shard: its units only, a shard record and seal, no summary
models.py  the validated shapes of a plan and of a shard record
intake.py  what a merge accepts from a shard: no link followed, its root recomputed and bound
merge.py   `skill-eval merge`: verified shard groups, missing units, summary and aggregate
"""
