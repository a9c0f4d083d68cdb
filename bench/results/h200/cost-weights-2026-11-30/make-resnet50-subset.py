#!/usr/bin/env python3
"""The ResNet-50 measurements of a `db export` (any activation sparsity): make-resnet50-subset.py IN.json.gz OUT.json"""
import gzip
import json
import os
import re
import sys

keys = set(json.load(open(os.path.join(os.path.dirname(__file__), "resnet50-problem-keys.json"))))
export = json.load(gzip.open(sys.argv[1]))
export["measurements"] = [m for m in export["measurements"] if re.sub(r"_z\d+$", "", m["problem"]) in keys]
json.dump(export, open(sys.argv[2], "w"))
