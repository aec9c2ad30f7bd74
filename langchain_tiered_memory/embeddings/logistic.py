"""A small L2-regularised logistic regression in numpy (no scikit-learn dependency).

Example:
    >>> import numpy as np
    >>> x = np.array([[0.0], [0.2], [0.8], [1.0]])
    >>> model = fit_logistic(x, np.array([0, 0, 1, 1]), l2=0.01, steps=2000)
    >>> [round(float(p)) for p in predict_proba(model, x)]
    [0, 0, 1, 1]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Logistic", "Softmax", "fit_logistic", "fit_softmax", "predict_proba", "predict_softmax"]


@dataclass(frozen=True)
class Logistic:
    """A fitted model: features are standardised by ``mean`` and ``scale`` first."""

    weights: np.ndarray
    bias: float
    mean: np.ndarray
    scale: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "weights": [round(float(w), 6) for w in self.weights],
            "bias": float(self.bias),
            "mean": [round(float(m), 6) for m in self.mean],
            "scale": [round(float(s), 6) for s in self.scale],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Logistic:
        """Inverse of :meth:`to_dict`."""
        return cls(
            np.asarray(data["weights"], dtype=np.float64),
            float(data["bias"]),
            np.asarray(data["mean"], dtype=np.float64),
            np.asarray(data["scale"], dtype=np.float64),
        )


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def fit_logistic(
    x: np.ndarray, y: np.ndarray, *, l2: float = 1.0, steps: int = 500, lr: float = 0.5
) -> Logistic:
    """Fit by full-batch gradient descent; classes are weighted to balance.

    Raises:
        ValueError: for mismatched shapes or labels other than 0/1.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError("x must be (n, d) and y (n,)")
    if not set(np.unique(y)) <= {0.0, 1.0}:
        raise ValueError("labels must be 0 or 1")
    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    x = (x - mean) / scale
    pos = max(float(y.sum()), 1.0)
    neg = max(float(len(y) - y.sum()), 1.0)
    sample = np.where(y == 1, len(y) / (2 * pos), len(y) / (2 * neg))
    w = np.zeros(x.shape[1])
    b = 0.0
    for _ in range(steps):
        p = _sigmoid(x @ w + b)
        g = (p - y) * sample
        w -= lr * (x.T @ g / len(y) + l2 * w / len(y))
        b -= lr * float(g.mean())
    return Logistic(w, b, mean, scale)


def predict_proba(model: Logistic, x: np.ndarray) -> np.ndarray:
    """P(label 1) for each row of ``x``."""
    z = (np.asarray(x, dtype=np.float64) - model.mean) / model.scale
    return _sigmoid(z @ model.weights + model.bias)


@dataclass(frozen=True)
class Softmax:
    """A fitted multinomial model: one weight column per class in ``classes``."""

    weights: np.ndarray
    bias: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    classes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "classes": list(self.classes),
            "weights": [[round(float(w), 6) for w in row] for row in self.weights],
            "bias": [round(float(b), 6) for b in self.bias],
            "mean": [round(float(m), 6) for m in self.mean],
            "scale": [round(float(s), 6) for s in self.scale],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Softmax:
        """Inverse of :meth:`to_dict`."""
        return cls(
            np.asarray(data["weights"], dtype=np.float64),
            np.asarray(data["bias"], dtype=np.float64),
            np.asarray(data["mean"], dtype=np.float64),
            np.asarray(data["scale"], dtype=np.float64),
            tuple(data["classes"]),
        )


def fit_softmax(
    x: np.ndarray,
    labels: list[str],
    *,
    l2: float = 1.0,
    steps: int = 600,
    lr: float = 0.5,
) -> Softmax:
    """Fit a multinomial logistic regression by full-batch gradient descent;
    classes are weighted to balance.

    Raises:
        ValueError: for mismatched shapes or fewer than two classes.

    Example:
        >>> x = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
        >>> model = fit_softmax(x, ["a", "b", "c", "d"], l2=0.01, steps=3000)
        >>> [model.classes[i] for i in predict_softmax(model, x).argmax(axis=1)]
        ['a', 'b', 'c', 'd']
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or len(labels) != x.shape[0]:
        raise ValueError("x must be (n, d) with one label per row")
    classes = tuple(sorted(set(labels)))
    if len(classes) < 2:
        raise ValueError("need at least two classes")
    index = {c: i for i, c in enumerate(classes)}
    y = np.array([index[label] for label in labels])
    onehot = np.eye(len(classes))[y]
    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    z = (x - mean) / scale
    counts = onehot.sum(axis=0)
    sample = (len(y) / (len(classes) * counts))[y]
    w = np.zeros((x.shape[1], len(classes)))
    b = np.zeros(len(classes))
    for _ in range(steps):
        g = (_softmax(z @ w + b) - onehot) * sample[:, None]
        w -= lr * (z.T @ g / len(y) + l2 * w / len(y))
        b -= lr * g.mean(axis=0)
    return Softmax(w, b, mean, scale, classes)


def _softmax(s: np.ndarray) -> np.ndarray:
    s = s - s.max(axis=1, keepdims=True)
    e = np.exp(s)
    out: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return out


def predict_softmax(model: Softmax, x: np.ndarray) -> np.ndarray:
    """P(each class) for each row of ``x`` (columns in ``model.classes`` order)."""
    z = (np.asarray(x, dtype=np.float64) - model.mean) / model.scale
    return _softmax(z @ model.weights + model.bias)
