"""Prometheus collectors whose ``labels(...)`` children are remembered (the plugin's collectors,
:mod:`.metrics`, are made of these). Same samples, same API as ``prometheus_client``'s."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = ["LABELS_MEMO_MAX", "RememberedCounter", "RememberedGauge", "RememberedHistogram"]

#: label-value tuples whose child each collector remembers (``labels`` past it works as without the memo)
LABELS_MEMO_MAX = 4096


class _RememberedChildren:
    """``labels(*values)`` answered from a dict of the children already made.

    ``prometheus_client``'s ``labels`` checks the values, formats each with ``str`` and takes a lock
    on every call (about 1 µs, and a request makes a dozen such calls across the hooks); the child for
    the same values is the same object every time, so it is remembered here (by the values as passed,
    at most :data:`LABELS_MEMO_MAX` of them). ``remove`` and ``clear`` forget the remembered children.
    Keyword labels, or values that cannot be hashed, go to ``prometheus_client`` as they are."""

    def labels(self, *labelvalues, **labelkwargs):
        if labelkwargs or not labelvalues:
            return super().labels(*labelvalues, **labelkwargs)
        memo = self.__dict__.get("_kvwarm_children")
        if memo is None:
            memo = self.__dict__["_kvwarm_children"] = {}
        try:
            child = memo.get(labelvalues)
        except TypeError:  # an unhashable value: prometheus_client formats it with str
            return super().labels(*labelvalues)
        if child is None:
            child = super().labels(*labelvalues)
            if len(memo) < LABELS_MEMO_MAX:
                memo[labelvalues] = child
        return child

    def remove(self, *labelvalues):
        self.__dict__.pop("_kvwarm_children", None)
        return super().remove(*labelvalues)

    def clear(self):
        self.__dict__.pop("_kvwarm_children", None)
        return super().clear()


class RememberedCounter(_RememberedChildren, Counter):
    pass


class RememberedGauge(_RememberedChildren, Gauge):
    pass


class RememberedHistogram(_RememberedChildren, Histogram):
    pass
