"""The seccomp programs as a binary tree decide exactly what the plain list of rules decides.

`seccomp._program` asks libseccomp for a binary tree (cheaper for the kernel to load in every
command); this runs both forms on a classic-BPF interpreter for every syscall number of each
architecture the filter knows, with argument values on and around each argument rule's value.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest

from docket.sandboxes.bwrap import seccomp

#: `AUDIT_ARCH_*` values: x86_64 (x32 numbers carry bit 30), i386, aarch64.
_ARCHES = (0xC000003E, 0x40000003, 0xC00000B7)
_X32_BIT = 0x40000000
_SYSCALLS = 480


def _run(program: bytes, nr: int, arch: int, args: tuple[int, ...]) -> int:
    """The return value of a classic BPF `program` on one `struct seccomp_data`."""
    data = struct.pack("<iIQ6Q", nr, arch, 0x401000, *args)
    a = x = 0
    memory = [0] * 16
    pc = 0
    count = len(program) // 8
    while pc < count:
        code, jt, jf, k = struct.unpack_from("<HBBI", program, pc * 8)
        pc += 1
        kind = code & 0x07
        if kind == 0x00:  # LD
            mode = code & 0xE0
            if mode == 0x20:  # ABS, 32-bit words only in seccomp
                a = struct.unpack_from("<I", data, k)[0]
            elif mode == 0x60:  # MEM
                a = memory[k]
            elif mode == 0x00:  # IMM
                a = k
            else:
                raise AssertionError(f"unhandled LD {code:#x}")
        elif kind == 0x01:  # LDX
            x = memory[k] if code & 0xE0 == 0x60 else k
        elif kind == 0x02:  # ST
            memory[k] = a
        elif kind == 0x03:  # STX
            memory[k] = x
        elif kind == 0x04:  # ALU
            operand = x if code & 0x08 else k
            op = code & 0xF0
            results = {0x00: a + operand, 0x10: a - operand, 0x50: a & operand, 0x40: a | operand}
            if op not in results:
                raise AssertionError(f"unhandled ALU {code:#x}")
            a = results[op] & 0xFFFFFFFF
        elif kind == 0x05:  # JMP
            op = code & 0xF0
            operand = x if code & 0x08 else k
            if op == 0x00:  # JA
                pc += k
                continue
            taken = {0x10: a == operand, 0x20: a > operand, 0x30: a >= operand}.get(
                op, bool(a & operand) if op == 0x40 else None
            )
            if taken is None:
                raise AssertionError(f"unhandled JMP {code:#x}")
            pc += jt if taken else jf
        elif kind == 0x06:  # RET
            return a if code & 0x18 == 0x10 else k
        elif kind == 0x07:  # MISC: TAX, TXA
            if code & 0xF8 == 0x00:
                x = a
            else:
                a = x
        else:
            raise AssertionError(f"unhandled instruction {code:#x}")
    raise AssertionError("ran off the end of the program")


def _argument_cases(profile: seccomp.Profile) -> list[tuple[int, ...]]:
    """Argument vectors on, just around and far from every value an argument rule names."""
    values = {0, 1, 0xFFFFFFFF, 0x7FFFFFFF}
    for rules in profile.programs:
        for rule in rules:
            for _index, _op, value, mask in rule.args:
                for base in (value, value & mask, mask):
                    values |= {base, (base + 1) & 0xFFFFFFFF, (base - 1) & 0xFFFFFFFF}
    ordered = sorted(values)
    cases = [tuple([value] * 6) for value in ordered]
    cases += [tuple(ordered[(i + shift) % len(ordered)] for i in range(6)) for shift in (1, 3)]
    return cases


def _decisions(program: bytes, cases: list[tuple[int, ...]]) -> Iterator[tuple[int, int, int, int]]:
    for arch in _ARCHES:
        numbers = list(range(_SYSCALLS))
        if arch == _ARCHES[0]:
            numbers += [_X32_BIT | nr for nr in range(0, _SYSCALLS, 7)]
        for nr in numbers:
            for index, args in enumerate(cases if nr % 4 == 0 else cases[:3]):
                yield arch, nr, index, _run(program, nr, arch, args)


def test_binary_tree_decides_as_the_list_of_rules() -> None:
    lib = pytest.importorskip("pyseccomp", exc_type=ImportError)
    profile = seccomp.default_profile()
    cases = _argument_cases(profile)
    for index, rules in enumerate(profile.programs):
        strict = index == 0
        tree = seccomp._program(lib, profile.default, rules, strict, optimize=2)
        listed = seccomp._program(lib, profile.default, rules, strict, optimize=1)
        assert tree != listed  # two different programs ...
        assert list(_decisions(tree, cases)) == list(_decisions(listed, cases))  # ... one filter


def test_the_interpreter_sees_the_filter_deny() -> None:
    """The comparison above means something: the list form denies ptrace and allows read."""
    lib = pytest.importorskip("pyseccomp", exc_type=ImportError)
    profile = seccomp.default_profile()
    listed = seccomp._program(lib, profile.default, profile.programs[0], True, optimize=1)
    x86_64, ptrace, read = _ARCHES[0], 101, 0
    allow = 0x7FFF0000
    assert _run(listed, read, x86_64, (0,) * 6) == allow
    assert _run(listed, ptrace, x86_64, (0,) * 6) != allow
