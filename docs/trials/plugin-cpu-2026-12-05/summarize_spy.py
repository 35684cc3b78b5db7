"""Summarise a py-spy ``--format raw`` profile of a proxy: the share of all samples spent inside the plugin
(any frame of ``litellm_kvwarm``), per hook, and per plugin function (inclusive: a sample counts once for each
plugin function on its stack). Usage: ``python summarize_spy.py spy.txt [top]``."""

import collections
import sys


def main(path: str, top: int = 30) -> None:
    total = plugin = 0
    hooks: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, _, count = line.rstrip().rpartition(" ")
            n = int(count)
            total += n
            frames = [fr for fr in stack.split(";") if "litellm_kvwarm" in fr]
            if not frames:
                continue
            plugin += n
            hooks[frames[0].split(" (")[0]] += n
            for name in {fr.split(" (")[0] for fr in frames}:
                inclusive[name] += n
    print(f"samples {total}, in the plugin {plugin} ({plugin / total:.2%} of the proxy's samples)\n")
    print("| hook | share of proxy samples | share of plugin samples |\n| --- | --- | --- |")
    for name, n in hooks.most_common(6):
        print(f"| `{name}` | {n / total:.2%} | {n / plugin:.0%} |")
    print("\n| plugin function (inclusive) | share of proxy samples | share of plugin samples |\n| --- | --- | --- |")
    for name, n in inclusive.most_common(top):
        print(f"| `{name}` | {n / total:.2%} | {n / plugin:.0%} |")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30)
