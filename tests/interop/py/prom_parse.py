#!/usr/bin/python3
"""Parses a Prometheus text exposition on stdin with prometheus_client's own
parser (Debian's python3-prometheus-client) and prints it as JSON:
{"families": [{"name", "type", "help", "samples": [{"name", "labels", "value"}]}]}.
A text the parser refuses exits 1 with its error on stderr."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    text = sys.stdin.read()
    try:
        families = [
            {
                "name": f.name,
                "type": f.type,
                "help": f.documentation,
                "samples": [
                    {"name": s.name, "labels": s.labels, "value": s.value} for s in f.samples
                ],
            }
            for f in text_string_to_metric_families(text)
        ]
    except Exception as e:  # the parser's ValueError and friends: say which
        print(f"prometheus_client refused the text: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    json.dump({"families": families}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
