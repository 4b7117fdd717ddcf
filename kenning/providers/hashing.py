"""The offline default embedder: signed feature hashing of words, word pairs and character
trigrams. Deterministic, dependency-free, and good enough for lexical-semantic overlap.
"""

from __future__ import annotations

import re
import threading
import zlib
from collections.abc import Callable
from itertools import filterfalse

import numpy as np

from ..models import Usage
from .base import Embedder

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)
# Words that carry no meaning of their own; weighting them down keeps "where does X work"
# close to "X works at Y" rather than to every question.
_STOP = frozenset(
    "a an the and or of to in on at for by with from is are was were be been am do does did "
    "what where when who whom which how why that this these those it its i you he she we they "
    "me him her us them my your his our their as".split()
)


_CACHED_WORDS = 100_000


def _stem(word: str) -> str:
    # A tiny suffix stripper: enough to make "works"/"working"/"worked" share a feature.
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


#: a feature's weight by its kind and sign: a word's stem (±1), a character trigram (±1/4), a
#: pair of stems (±1/2). A feature is one code, ``kind * dimension + slot``: a text's vector
#: is its codes counted, times these weights (exact: small counts of multiples of 1/4)
_WEIGHTS = (1.0, -1.0, 0.25, -0.25, 0.5, -0.5)
_STEM, _TRIGRAM, _PAIR = 0, 2, 4

#: A pair's feature is the CRC-32 of ``b:<stem> <stem>``, found without hashing the pair: the
#: CRC of two strings in a row is the first one's CRC run through as many zero bytes as the
#: second has, XOR the second's (CRC-32 is linear), so it is read from two CRCs every stem has
#: (``_Vocabulary``) and a table per length: ``_ZEROS[n][k][b]`` is the register byte ``b`` at
#: place ``k`` becomes after ``n`` zero bytes; a longer stem takes ``_LONGEST`` bytes at a time
_LONGEST = 64


def _zeros() -> np.ndarray:
    x: np.ndarray = np.arange(256, dtype=np.uint32)[None, :] << (8 * np.arange(4, dtype=np.uint32))[:, None]
    tables = np.empty((_LONGEST + 1, 4, 256), dtype=np.uint32)
    tables[0] = x
    for n in range(1, _LONGEST + 1):
        for _ in range(8):  # one zero byte: eight shifts of the reflected register
            x = (x >> 1) ^ (np.uint32(0xEDB88320) * (x & 1))
        tables[n] = x
    return tables


_ZEROS = _zeros()


def _after_zeros(crc: np.ndarray, count: np.ndarray) -> np.ndarray:
    """``crc`` (uint32) run through ``count`` zero bytes, element by element."""
    crc, count = crc.copy(), count.copy()
    while (longer := count > _LONGEST).any():
        crc[longer] = _after_zeros(crc[longer], np.full(int(longer.sum()), _LONGEST))
        count[longer] -= _LONGEST
    return (_ZEROS[count, 0, crc & 255] ^ _ZEROS[count, 1, (crc >> 8) & 255]
            ^ _ZEROS[count, 2, (crc >> 16) & 255] ^ _ZEROS[count, 3, crc >> 24])


class _Trigrams(dict[str, int]):
    """The code of each character trigram seen (words share most of theirs)."""

    def __init__(self, embedder: HashingEmbedder) -> None:
        super().__init__()
        self.embedder = embedder

    def __missing__(self, trigram: str) -> int:
        code = self[trigram] = self.embedder._code("c:" + trigram, _TRIGRAM)
        return code


class _Vocabulary(dict[str, int]):
    """The words an embedder has read, each given a number the first time it is looked up, and
    per number its features: the codes of its stem and character trigrams (``codes[start[n] :
    start[n] + size[n]]``) and its stem's CRCs for the pairs it is in (``head``: of ``b:<stem> ``,
    ``tail``: of the stem, ``length``: its bytes). New words wait in lists until ``ready``."""

    def __init__(self, embedder: HashingEmbedder) -> None:
        super().__init__()
        self.embedder = embedder
        self.codes = np.zeros(0, dtype=np.int64)
        self.used = 0  # of ``codes``
        self.start, self.size, self.length = (np.zeros(0, dtype=np.int64) for _ in range(3))
        self.head, self.tail = np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.uint32)
        self.new: tuple[list[int], list[int], list[int], list[int], list[int]] = ([], [], [], [], [])
        self.trigrams = _Trigrams(embedder)

    def __missing__(self, word: str) -> int:
        codes, sizes, heads, tails, lengths = self.new
        stem = _stem(word)
        said = stem.encode()
        found = self.embedder._word_codes(stem, self.trigrams.__getitem__)
        codes += found
        sizes.append(len(found))
        heads.append(zlib.crc32(b"b:" + said + b" "))
        tails.append(zlib.crc32(said))
        lengths.append(len(said))
        number = self[word] = len(self)
        return number

    def ready(self) -> None:
        """The new words' features put in the arrays."""
        codes, sizes, heads, tails, lengths = self.new
        if not sizes:
            return
        words, size = len(self) - len(sizes), np.asarray(sizes, dtype=np.int64)
        self.start = _put(self.start, words, self.used + np.cumsum(size) - size)
        self.size = _put(self.size, words, size)
        self.head = _put(self.head, words, np.asarray(heads, dtype=np.uint32))
        self.tail = _put(self.tail, words, np.asarray(tails, dtype=np.uint32))
        self.length = _put(self.length, words, np.asarray(lengths, dtype=np.int64))
        self.codes = _put(self.codes, self.used, np.asarray(codes, dtype=np.int64))
        self.used += len(codes)
        self.new = ([], [], [], [], [])


def _put(array: np.ndarray, at: int, values: np.ndarray) -> np.ndarray:
    """``values`` written into ``array`` from ``at`` on, in a copy twice as long when it is full."""
    if at + len(values) > len(array):
        array = np.concatenate([array[:at], np.zeros(max(at, len(values), 256), dtype=array.dtype)])
    array[at : at + len(values)] = values
    return array


class HashingEmbedder(Embedder):
    batch_size = 1024
    #: its vectors are a hashed bag of the same words the full-text lane ranks: on the LoCoMo
    #: and HotpotQA dev splits recall was better without its lane (docs/benchmarks.md)
    recall_weight = 0.0
    makes_calls = False

    def __init__(self, dimension: int = 256) -> None:
        self.dimension = dimension
        self.name = f"hashing-v1-{dimension}"
        #: the words read so far and their features (words repeat: most texts hash nothing new)
        self._words = _Vocabulary(self)
        self._lock = threading.Lock()
        self._weights = np.repeat(np.asarray(_WEIGHTS), dimension)

    def _code(self, key: str, kind: int) -> int:
        """The code of a feature of ``kind`` (``_STEM``, ``_TRIGRAM``, ``_PAIR``): its slot,
        and its sign from the hash's top bit."""
        h = zlib.crc32(key.encode())
        return (kind + (0 if (h >> 31) & 1 else 1)) * self.dimension + h % self.dimension

    def _word_codes(self, stem: str, trigram: Callable[[str], int]) -> list[int]:
        """The codes of a stem's features: itself and its character trigrams (``trigram``: the
        code of one)."""
        padded = f"<{stem}>"
        return [self._code("w:" + stem, _STEM), *map(trigram, [padded[i : i + 3] for i in range(len(padded) - 2)])]

    def _codes(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Every feature of ``texts``: the codes of their words (stem and character trigrams)
        and of their pairs of consecutive words, and the row (text) of each."""
        with self._lock:  # the vocabulary's numbers stay those of its arrays while they are read
            if len(self._words) >= _CACHED_WORDS:
                self._words = _Vocabulary(self)
            words = self._words
            number, ids, ends = words.__getitem__, list[int](), list[int]()
            for text in texts:
                ids.extend(map(number, filterfalse(_STOP.__contains__, _WORD.findall(text.casefold()))))
                ends.append(len(ids))
            words.ready()
            found = np.asarray(ids, dtype=np.int64)
            row = np.repeat(np.arange(len(texts), dtype=np.int64), np.diff(ends, prepend=0))
            size = words.size[found]
            # each word's codes, one after another: its start, then one on for each next code
            first = np.repeat(words.start[found] - (np.cumsum(size) - size), size)
            word_codes = words.codes[first + np.arange(len(first))]
            word_rows = np.repeat(row, size)
            paired = row[:-1] == row[1:]  # a word and the next one of its text
            left, right = found[:-1][paired], found[1:][paired]
            crc = _after_zeros(words.head[left], words.length[right]) ^ words.tail[right]
        # the pair's sign from the hash's top bit, its slot from the rest (as ``_code``)
        pair_codes = (_PAIR + 1 - (crc >> 31).astype(np.int64)) * self.dimension + (crc % self.dimension).astype(np.int64)
        return np.concatenate([word_codes, pair_codes]), np.concatenate([word_rows, row[:-1][paired]])

    def _features(self, text: str) -> dict[int, float]:
        """``text``'s features: slot -> summed weight (what ``embed_batch`` counts)."""
        feats: dict[int, float] = {}
        for code in self._codes([text])[0].tolist():
            kind, index = divmod(code, self.dimension)
            feats[index] = feats.get(index, 0.0) + _WEIGHTS[kind]
        return feats

    def embed_batch(self, texts: list[str], usage: Usage) -> np.ndarray:
        # every feature of every text in one count: a text's row is its codes counted, times
        # their weights (exact, so the order of the sums changes nothing)
        codes, rows = self._codes(texts)
        width = len(_WEIGHTS) * self.dimension
        counts = np.bincount(codes + rows * width, minlength=len(texts) * width)
        weighted = counts.reshape(len(texts), len(_WEIGHTS), self.dimension) * self._weights.reshape(len(_WEIGHTS), -1)
        out = weighted.sum(axis=1).astype(np.float32)
        usage.embedded_texts += len(texts)
        return out
