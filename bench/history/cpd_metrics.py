"""F1 with a margin and the covering metric for change-point detection, from their published
definitions (G. J. J. van den Burg and C. K. I. Williams, "An Evaluation of Change Point
Detection Algorithms", 2020, section 4.2), for one or several annotators.

Conventions (as in that paper): a change point is the index of the first point of a new
segment; the start of the series (index 0) is a change point of every annotation and of every
prediction, so that a series without changes is scored sensibly; a prediction matches an
annotated change within `margin` points, each prediction at most once per annotator.

* Precision  P = |TP(T*, X)| / |X|, with T* the union of the annotators' sets;
* Recall     R = 1/K Σ_k |TP(T_k, X)| / |T_k|;
* F1         = 2 P R / (P + R).
* Covering   C(G, G') = 1/T Σ_{A ∈ G} |A| max_{A' ∈ G'} |A ∩ A'| / |A ∪ A'|, for the partition
  G of an annotator and G' of the prediction, averaged over the annotators.
"""


def true_positives(truth, pred, margin=5):
    """The annotated points matched by a prediction within `margin`, each prediction used once
    (closest first, in the order of the annotated points)."""
    free = set(pred)
    tp = set()
    for tau in sorted(truth):
        close = sorted((abs(tau - x), x) for x in free if abs(tau - x) <= margin)
        if close:
            tp.add(tau)
            free.remove(close[0][1])
    return tp


def f_measure(annotations, predictions, margin=5, return_pr=False):
    """`annotations`: a list of lists (one per annotator); `predictions`: a list."""
    tks = [set(a) | {0} for a in annotations]
    x = set(predictions) | {0}
    tstar = set().union(*tks)
    p = len(true_positives(tstar, x, margin)) / len(x)
    r = sum(len(true_positives(tk, x, margin)) / len(tk) for tk in tks) / len(tks)
    f = 0.0 if p + r == 0 else 2 * p * r / (p + r)
    return (f, p, r) if return_pr else f


def partition(cps, n):
    """The segments of a series of `n` points cut at `cps`, as half-open intervals (a, b)."""
    b = sorted({c for c in cps if 0 < c < n})
    edges = [0] + b + [n]
    return [(a, c) for a, c in zip(edges, edges[1:]) if c > a]


def _cover_single(truth_parts, pred_parts, n):
    # Intervals, not sets of indices: the same Jaccard overlaps in O(segments) memory, so
    # that series of a million points are scored in a moment. Both lists are sorted, so the
    # predicted segments overlapping a true one are found by a moving start.
    total = 0.0
    j = 0
    for a0, a1 in truth_parts:
        while j < len(pred_parts) and pred_parts[j][1] <= a0:
            j += 1
        best = 0.0
        k = j
        while k < len(pred_parts) and pred_parts[k][0] < a1:
            b0, b1 = pred_parts[k]
            inter = min(a1, b1) - max(a0, b0)
            if inter > 0:
                best = max(best, inter / ((a1 - a0) + (b1 - b0) - inter))
            k += 1
        total += (a1 - a0) * best
    return total / n


def covering(annotations, predictions, n):
    pred = partition(predictions, n)
    return sum(_cover_single(partition(a, n), pred, n) for a in annotations) / len(annotations)


def _self_test():
    # No change annotated, none predicted: perfect.
    assert f_measure([[]], []) == 1.0 and covering([[]], [], 10) == 1.0
    # Annotated [50], predicted nothing: P = 1 (only 0), R = 1/2, F1 = 2/3.
    assert abs(f_measure([[50]], []) - 2 / 3) < 1e-12
    # Predicted 53 (within 5) and 80 (false): P = 2/3, R = 1, F1 = 0.8.
    assert abs(f_measure([[50]], [53, 80]) - 0.8) < 1e-12
    # Cover of truth [0,50),[50,100) by one segment: 2 * 50 * 0.5 / 100 = 0.5.
    assert abs(covering([[50]], [], 100) - 0.5) < 1e-12
    # Prediction 60: [0,50) best J with [0,60) = 50/60; [50,100) with [60,100) = 40/50.
    assert abs(covering([[50]], [60], 100) - (50 * 50 / 60 + 50 * 0.8) / 100) < 1e-12
    # Two annotators: [50] and [50, 70]; prediction [50]. T* = {0, 50, 70}: P = 2/2 = 1;
    # R = (2/2 + 2/3)/2 = 5/6; F1 = 2 * 5/6 / (11/6) = 10/11.
    assert abs(f_measure([[50], [50, 70]], [50]) - 10 / 11) < 1e-12
    # A prediction matches an annotation once: [50] predicted twice nearby.
    assert abs(f_measure([[50]], [49, 51]) - 2 * (2 / 3) / (2 / 3 + 1)) < 1e-12
    # Against the definition with sets of indices, on a ragged case.
    truth, pred, n = [13, 40, 41, 77], [5, 13, 39, 60, 61, 90], 100
    sets = lambda cps: [set(range(a, b)) for a, b in partition(cps, n)]
    direct = sum(len(a) * max(len(a & b) / len(a | b) for b in sets(pred)) for a in sets(truth)) / n
    assert abs(covering([truth], pred, n) - direct) < 1e-12


_self_test()
