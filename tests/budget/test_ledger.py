"""The spend ledger: charges add up, the ceiling exhausts it, processes share it under the lock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skill_eval.budget.ledger import FileLedger as Ledger
from tests.support.files import read_json

# One child process charging the ledger; run several at once to contend for the lock.
CHARGER = """
import sys
from pathlib import Path
from pytest_skill_eval.budget.ledger import FileLedger as Ledger
ledger = Ledger(Path(sys.argv[1]), float(sys.argv[2]))
for _ in range(int(sys.argv[3])):
    ledger.charge(float(sys.argv[4]))
"""


def test_a_new_ledger_is_empty_and_open(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "ledger.json"
    ledger = Ledger.create(path, 2.5)
    assert read_json(path) == {"maxCost": 2.5, "spent": 0.0, "exhausted": False, "charges": 0}
    assert ledger.exhausted() is False
    assert ledger.snapshot() == {"maxCost": 2.5, "spent": 0.0, "exhausted": False}


def test_charges_add_up_without_float_drift(tmp_path: Path) -> None:
    ledger = Ledger.create(tmp_path / "ledger.json", 1.0)
    for amount in (0.1, 0.2, 0.3):
        ledger.charge(amount)
    assert read_json(ledger.path) == {
        "maxCost": 1.0,
        "spent": 0.6,
        "exhausted": False,
        "charges": 3,
    }
    assert ledger.exhausted() is False


def test_reaching_the_ceiling_exactly_exhausts_the_ledger(tmp_path: Path) -> None:
    ledger = Ledger.create(tmp_path / "ledger.json", 0.3)
    ledger.charge(0.1)
    ledger.charge(0.1)
    assert ledger.exhausted() is False
    ledger.charge(0.1)  # 0.1 + 0.1 + 0.1 is 0.30000000000000004 unrounded, 0.3 here
    assert ledger.exhausted() is True
    assert ledger.snapshot() == {"maxCost": 0.3, "spent": 0.3, "exhausted": True}


def test_spend_past_the_ceiling_is_still_counted(tmp_path: Path) -> None:
    # Subjects already running when the ceiling is reached finish and charge what they spent.
    ledger = Ledger.create(tmp_path / "ledger.json", 1.0)
    ledger.charge(1.5)
    ledger.charge(0.25)
    assert ledger.snapshot() == {"maxCost": 1.0, "spent": 1.75, "exhausted": True}
    assert read_json(ledger.path)["charges"] == 2


def test_a_zero_charge_is_counted_without_spending(tmp_path: Path) -> None:
    ledger = Ledger.create(tmp_path / "ledger.json", 1.0)
    ledger.charge(0.0)
    assert read_json(ledger.path)["charges"] == 1
    assert ledger.snapshot()["spent"] == 0.0


def test_every_handle_on_the_file_sees_the_same_spend(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    Ledger.create(path, 1.0)
    Ledger(path, 1.0).charge(0.75)
    Ledger(path, 1.0).charge(0.25)
    assert Ledger(path, 1.0).exhausted() is True


def test_concurrent_processes_lose_no_charge(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    Ledger.create(path, 1000.0)
    processes, charges = 4, 40
    children = [
        subprocess.Popen([sys.executable, "-c", CHARGER, str(path), "1000", str(charges), "0.5"])
        for _ in range(processes)
    ]
    assert [child.wait(timeout=120) for child in children] == [0] * processes
    state = read_json(path)
    assert state["charges"] == processes * charges
    assert state["spent"] == processes * charges * 0.5
    assert state["exhausted"] is False
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.json", "ledger.lock"]


def test_concurrent_processes_exhaust_at_the_ceiling(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    Ledger.create(path, 10.0)
    children = [
        subprocess.Popen([sys.executable, "-c", CHARGER, str(path), "10", "10", "0.5"])
        for _ in range(3)
    ]
    assert [child.wait(timeout=120) for child in children] == [0, 0, 0]
    assert Ledger(path, 10.0).snapshot() == {"maxCost": 10.0, "spent": 15.0, "exhausted": True}


def test_a_missing_ledger_file_reads_as_empty_and_is_not_created_by_reading(
    tmp_path: Path,
) -> None:
    ledger = Ledger(tmp_path / "ledger.json", 1.0)
    assert ledger.exhausted() is False
    assert ledger.snapshot() == {"maxCost": 1.0, "spent": 0.0, "exhausted": False}
    assert not ledger.path.exists()  # reading changes nothing, so nothing is written
    ledger.charge(0.5)
    assert read_json(ledger.path) == {"spent": 0.5, "charges": 1}


def test_an_empty_ledger_file_reads_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    path.write_bytes(b"")
    ledger = Ledger(path, 1.0)
    assert ledger.exhausted() is False
    ledger.charge(1.0)
    assert read_json(path) == {"spent": 1.0, "charges": 1, "exhausted": True}


def test_a_missing_directory_is_an_error_except_through_create(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Ledger(tmp_path / "absent" / "ledger.json", 1.0).exhausted()


def test_a_corrupt_ledger_file_raises_and_is_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    Ledger.create(path, 1.0)
    path.write_text('{"spent": 0.5, ', encoding="utf-8")
    ledger = Ledger(path, 1.0)
    with pytest.raises(json.JSONDecodeError):
        ledger.charge(0.25)
    with pytest.raises(json.JSONDecodeError):
        ledger.exhausted()
    assert path.read_text(encoding="utf-8") == '{"spent": 0.5, '
    # The lock was released on the way out: a repaired file is usable at once.
    path.write_text(json.dumps({"spent": 0.5, "charges": 1}), encoding="utf-8")
    ledger.charge(0.25)
    assert ledger.snapshot() == {"maxCost": 1.0, "spent": 0.75, "exhausted": False}
