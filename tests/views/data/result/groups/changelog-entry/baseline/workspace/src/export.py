import csv


def export(rows, path, delimiter=";"):
    with open(path, "w", newline="") as handle:
        csv.writer(handle, delimiter=delimiter).writerows(rows)
