"""A CPU-bound Python program for `make demo`: a few distinct hot paths, so the flame graph
shows Python functions (with pyebpf's Python frames) above the interpreter's native frames.

    python3 scripts/demo/workload.py [SECONDS]
"""
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def primes(limit):
    sieve = bytearray([1]) * limit
    sieve[0:2] = b"\0\0"
    for i in range(2, int(limit**0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(range(i * i, limit, i)))
    return sum(sieve)


def word_counts(text):
    counts = {}
    for word in text.split():
        counts[word] = counts.get(word, 0) + 1
    return counts


def render_rows(rows):
    return "\n".join(",".join(f"{v:.3f}" for v in row) for row in rows)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    text = " ".join(f"w{i % 997}" for i in range(20000))
    rows = [[i * 0.5, i / 3.0, i * 1.25] for i in range(2000)]
    end = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < end:
        fib(18)
        primes(50000)
        word_counts(text)
        render_rows(rows)
        rounds += 1
    print(f"workload: {rounds} rounds in {seconds:g} s")


if __name__ == "__main__":
    main()
