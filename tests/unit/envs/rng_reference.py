"""Independent reference for envs/random.ts, written in Python with explicit 32-bit masking.

Prints the FNV-1a hashes and the first outputs of Rng.fromSeed(seed, stream) that random.test.ts checks, so
the TypeScript generator is compared with an implementation that does not share its integer semantics.
Run: python3 tests/unit/envs/rng_reference.py
"""
M = 0xFFFFFFFF


def fnv1a32(text):
    h = 0x811C9DC5
    for b in text.encode("utf-8"):
        h ^= b
        h = (h * 0x01000193) & M
    return h


def mix32(x):
    z = (x + 0x9E3779B9) & M
    z = ((z ^ (z >> 16)) * 0x85EBCA6B) & M
    z = ((z ^ (z >> 13)) * 0xC2B2AE35) & M
    return (z ^ (z >> 16)) & M


class Sfc32:
    def __init__(self, a, b, c, d):
        self.a, self.b, self.c, self.d = a & M, b & M, c & M, d & M
        for _ in range(12):
            self.next()

    def next(self):
        t = (self.a + self.b) & M
        self.a = self.b ^ (self.b >> 9)
        self.b = (self.c + (self.c << 3)) & M
        self.c = ((self.c << 21) | (self.c >> 11)) & M
        self.d = (self.d + 1) & M
        t = (t + self.d) & M
        self.c = (self.c + t) & M
        return t


def from_seed(seed, stream=""):
    low = seed & M
    high = (seed >> 32) & M  # floor division by 2^32, two's complement bits
    s = fnv1a32(stream)
    w0 = mix32(low ^ mix32(s))
    w1 = mix32(high ^ mix32(w0))
    w2 = mix32(s ^ mix32(w1))
    return Sfc32(w0, w1, w2, 1)


if __name__ == "__main__":
    for text in ["", "a", "foobar", "123", "sokoban", "√"]:
        print(f"fnv1a32({text!r}) = {fnv1a32(text)}")
    for seed, stream in [(0, ""), (42, "sokoban"), (-5, "frozenlake/slip"), (2**40 + 3, "bandit")]:
        g = from_seed(seed, stream)
        print(f"fromSeed({seed}, {stream!r}):", [g.next() for _ in range(5)])
