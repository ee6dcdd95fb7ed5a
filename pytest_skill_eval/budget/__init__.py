"""The spend ceiling and its ledgers: the local file ledger and the shared Redis one."""
