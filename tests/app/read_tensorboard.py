#!/usr/bin/env python3
"""Reads TensorBoard event files back with the tensorboard package (its own reader checks every record's CRC) and
prints, as JSON, {run folder: {tag: [[step, value, wall_time], ...]}} for every run folder under LOGDIR.

usage: read_tensorboard.py LOGDIR
"""
import json
import os
import sys

from tensorboard.backend.event_processing import event_accumulator


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    runs = {}
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        if not os.path.isdir(folder):
            continue
        accumulator = event_accumulator.EventAccumulator(folder, size_guidance={event_accumulator.SCALARS: 0})
        accumulator.Reload()
        runs[name] = {
            tag: [[e.step, e.value, e.wall_time] for e in accumulator.Scalars(tag)]
            for tag in accumulator.Tags()[event_accumulator.SCALARS]
        }
    print(json.dumps(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
