"""Proof that the tests can fail: known-bad kernels ("mutants").

Each patch in kernel-patches/regressions/ breaks one behaviour and says, in
git-style trailers of its description, what must catch it:

    Mutant: the final fput of a mapped file runs under mmap_lock
    Caught-by: fput_test/deferred_fput.mapped_write  (a case, by its exact
                                      "<program>/<case>" name; one per line)
    Caught-by: splat:lockdep-circular (a kernel splat of that kind)
    Exposed-in: custom-policy cells   (optional: where it shows, and why only there)
    Flavor: debug                     (optional: a race only SMP shows, a use-after-free
                                       only KASAN sees: boot the debug cells instead)
    Since: 6.14                       (optional: the behaviour is that kernel's, so are
                                       the cases it names: older kernels skip them)

`make mutants` builds each on top of the base variant's series (matrix.yaml
mutants:), boots the mutants: cells, and judges it caught when every
Caught-by: was met in its cells: each case it names failed by its own
checks (a failed ASSERT/EXPECT in its log; a crash, its own clock running
out, no result or a kernel splat alone prove nothing of them), each
splat: kind was reported.  A case is named exactly, never by a wildcard
that a sibling could satisfy: every case of the suite is named by a
mutant of every kernel version (the unit tests check it), so each is
proven able to fail by a kernel that breaks what it tests, and `make
mutants` prints that per-case table.  A mutant
of another flavor is built on the base's variant of that flavor (the
debug one: `of:` the base in matrix.yaml) and boots the cells the matrix
gives that variant, on the mutants: section's arches.

Another kernel version has a directory of its own (mutants: versions:)
with a quilt-style `series` naming its known-bad patches: the ones that
still apply as they are (`../0009-...patch`) and ports where the code
moved; a comment there says why any other is left out.  A mutant with
Since: is that version's own (and a newer one's): no 6.1 original.  A cell that
could not be built or booted ("error") proves nothing and counts against it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError
from .flavors import FLAVORS, PLAIN
from .kbuild import DEFAULT_VERSION, read_series
from .matrix import Variant
from .results import CellResult, not_by_its_checks
from .sources import version_key
from .status import FAILING, Status

_TRAILER = re.compile(r"^(Mutant|Caught-by|Exposed-in|Flavor|Since):\s*(.*?)\s*$")


@dataclass(frozen=True)
class Mutant:
    variant: str            # its variant name, e.g. "m0009-ima-accept-wrong-hash"
    patch: Path
    summary: str            # Mutant:
    caught_by: tuple[str, ...]
    exposed_in: str = ""
    flavor: str = PLAIN     # Flavor:
    since: str = ""         # Since: the kernel version whose behaviour it breaks

    def runs_on(self, version: str) -> bool:
        """Whether a kernel of version has the behaviour (and the cases)."""
        return not self.since or version_key(version) >= version_key(self.since)


def variant_name(patch: Path) -> str:
    stem = re.sub(r"(?i)^(\d+)-(regression-|mutant-)?", r"m\1-", patch.stem)
    return re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")


def parse(patch: Path, version: str = DEFAULT_VERSION) -> Mutant:
    """version: the kernel it is built on; other than the default, its
    variant name says it (m0009-...-6.12)."""
    try:
        text = patch.read_text(errors="replace")
    except OSError as e:
        raise ConfigError(f"{patch}: cannot read: {e.strerror}") from e
    fields: dict[str, list[str]] = {"Mutant": [], "Caught-by": [], "Exposed-in": [],
                                    "Flavor": [], "Since": []}
    for line in text.splitlines():
        if line == "---" or line.startswith("diff --git") or line.startswith("--- "):
            break
        if m := _TRAILER.match(line):
            fields[m.group(1)].append(m.group(2))
    if not fields["Caught-by"] or not all(fields["Caught-by"]):
        raise ConfigError(f"{patch}: no 'Caught-by: <program>/<case>' trailer in its "
                          "description; a known-bad patch must name the tests that catch it "
                          "(see harness/mutants.py)")
    for pattern in fields["Caught-by"]:
        if re.search(r"[*?\[\]]", pattern) or not re.fullmatch(r"splat:\S+|[\w-]+/\S+", pattern):
            raise ConfigError(f"{patch}: 'Caught-by: {pattern}': name one case exactly "
                              "(<program>/<case>, one trailer each) or a splat (splat:<kind>); "
                              "a wildcard is met by any one case it matches, which proves "
                              "nothing of the others")
    flavor = " ".join(fields["Flavor"]) or PLAIN
    if flavor not in FLAVORS:
        raise ConfigError(f"{patch}: 'Flavor: {flavor}' is no kernel flavor; expected one of "
                          f"{', '.join(FLAVORS)} (harness/flavors.py)")
    since = " ".join(fields["Since"])
    if since and not re.fullmatch(r"\d+\.\d+", since):
        raise ConfigError(f"{patch}: 'Since: {since}': expected a kernel version such as 6.14")
    name = variant_name(patch) + ("" if version == DEFAULT_VERSION else f"-{version}")
    return Mutant(name, patch, " ".join(fields["Mutant"]),
                  tuple(fields["Caught-by"]), " ".join(fields["Exposed-in"]), flavor, since)


def flavored_base(mutant: Mutant, base: Variant, variants: dict[str, Variant]) -> Variant:
    """The variant a mutant is built on: base, or for a mutant of another
    flavor, the variant of that flavor with base's tree, series and
    version."""
    if mutant.flavor == base.flavor:
        return base
    for v in variants.values():
        if (v.flavor, v.series, v.tree, v.version) == \
                (mutant.flavor, base.series, base.tree, base.version):
            return v
    raise ConfigError(f"{mutant.patch.name}: Flavor: {mutant.flavor}, but matrix.yaml has no "
                      f"{mutant.flavor} variant of {base.name!r}; add one "
                      f"({base.name}-{mutant.flavor}: {{of: {base.name}, "
                      f"flavor: {mutant.flavor}}})")


def discover(directory: Path, version: str = DEFAULT_VERSION) -> list[Mutant]:
    """The known-bad patches of a directory: those its series names, in
    order, or else every *.patch in it."""
    if (directory / "series").is_file():
        patches = list(read_series(directory / "series"))
    else:
        patches = sorted(directory.glob("*.patch"))
    if not patches:
        raise ConfigError(f"{directory}: no *.patch files: nothing to run")
    return [parse(p, version) for p in patches]


def as_variant(mutant: Mutant, base: Variant) -> Variant:
    """The base kernel plus the known-bad patch.  The base's known failures
    and known splats stay expected (xfail, known), so that only a new
    failure catches the mutant."""
    return Variant(mutant.variant, base.series, mutant.summary or mutant.patch.name,
                   base.tree, base.known_failures, patches=(*base.patches, mutant.patch),
                   workspace=True, catches=mutant.caught_by, known_splats=base.known_splats,
                   version=base.version, flavor=base.flavor, skips=base.skips)


@dataclass(frozen=True)
class Verdict:
    variant: str
    caught: bool
    evidence: tuple[str, ...]   # per pattern: what matched it, or why not
    met: tuple[str, ...] = ()   # the patterns met (a case: failed by its own checks)


def failures(cells: list[CellResult]) -> list[tuple[str, str, str | None]]:
    """(name, cell id, why it is no proof) of every failed test and every
    splat the variant does not expect (a known splat: its base kernel
    shows it too).  why: None for a test that failed by its own checks and
    for a splat; else how it failed (results.not_by_its_checks)."""
    found: list[tuple[str, str, str | None]] = []
    for c in cells:
        found += [(t.name, c.cell.id, not_by_its_checks(t)) for t in c.tests
                  if t.status in FAILING]
        found += [(f"splat:{s.kind}", c.cell.id, None) for s in c.splats if not s.known]
    return found


def booted(pattern: str, programs: tuple[str, ...]) -> bool:
    """Whether a Caught-by: pattern can be met when only programs boot
    (make mutants PROGRAMS=; none: all of them): a splat anywhere can."""
    return not programs or pattern.startswith("splat:") or \
        pattern.split("/", 1)[0] in programs


def judge(variant: str, patterns: tuple[str, ...], cells: list[CellResult],
          programs: tuple[str, ...] = ()) -> Verdict:
    """Caught when every pattern of a booted program matched a failure;
    those of programs not booted (PROGRAMS=) are only named."""
    # A guest that hung at boot ran nothing: it neither caught nor missed.
    errors = [c for c in cells if c.status == Status.ERROR or c.hung_at_boot]
    if errors or not cells:
        why = ((errors[0].hung_at_boot or errors[0].reason).splitlines()[0]
               if errors else "no cells ran")
        return Verdict(variant, False, (f"not tested: {why}",))
    failed = failures(cells)
    evidence, caught, met = [], True, []
    for pattern in patterns:
        if not booted(pattern, programs):
            evidence.append(f"{pattern}: not booted (PROGRAMS=)")
            continue
        hits = [cell for name, cell, why in failed if name == pattern and why is None]
        if hits:
            met.append(pattern)
            evidence.append(f"{pattern}: failed in {hits[0]}"
                            + (f" (+{len(hits) - 1} more)" if len(hits) > 1 else ""))
            continue
        caught = False
        other = [(cell, why) for name, cell, why in failed if name == pattern]
        if other:
            evidence.append(f"{pattern}: NOT BY ITS CHECKS: in {other[0][0]}: {other[0][1]}")
        else:
            evidence.append(f"{pattern}: NOTHING FAILED")
    return Verdict(variant, caught, tuple(evidence), tuple(met))


def cases_of(version: str, case_ids: list[str], every: dict[str, list[Mutant]]) -> list[str]:
    """The cases a kernel of version has: all but those only mutants of a
    newer kernel's behaviour name (Since: above version: AT_EXECVE_CHECK's
    cases, which an older kernel skips).  every: the mutants of each
    version (matrix.yaml mutants: versions:)."""
    newer = {p for mus in every.values() for mu in mus if not mu.runs_on(version)
             for p in mu.caught_by}
    mine = {p for mu in every.get(version, ()) for p in mu.caught_by}
    return [c for c in case_ids if c not in newer or c in mine]


def unnamed(version: str, case_ids: list[str], every: dict[str, list[Mutant]]) -> list[str]:
    """The cases of version no mutant of version names."""
    mine = {p for mu in every[version] for p in mu.caught_by}
    return [c for c in cases_of(version, case_ids, every) if c not in mine]


def case_table(case_ids: list[str], chosen: list[Mutant], verdicts: list[Verdict],
               every: bool = True) -> str:
    """Per case, the mutants that name it and whether it failed by its own
    checks under each: the proof that every case can fail.  every: all the
    version's mutants ran (else only the cases the chosen ones name are
    listed, and a case none names is no finding)."""
    met = {v.variant: v.met for v in verdicts}
    naming: dict[str, list[Mutant]] = {c: [] for c in case_ids} if every else {}
    for mu in chosen:
        for p in mu.caught_by:
            if not p.startswith("splat:"):
                naming.setdefault(p, []).append(mu)
    width = max(map(len, naming), default=0)
    rows, unproven = [], []
    for case, mus in naming.items():
        marks = [f"{mu.variant.split('-', 1)[0]} {'failed' if case in met[mu.variant] else 'NOT'}"
                 for mu in mus]
        if not any(case in met[mu.variant] for mu in mus):
            unproven.append(case)
        rows.append(f"{case:<{width}}  {', '.join(marks) or 'NO MUTANT NAMES IT'}")
    rows.append(f"cases: {len(naming) - len(unproven)} of {len(naming)} failed by their own "
                "checks under a mutant that names them"
                + (f"; not: {', '.join(unproven)}" if unproven else ""))
    return "\n".join(rows)


def report(verdicts: list[Verdict], notes: dict[str, str] | None = None) -> str:
    """notes: per variant, a line saying what the mutant breaks."""
    lines = []
    for v in verdicts:
        lines.append(f"{v.variant:<26} {'caught' if v.caught else 'NOT CAUGHT'}")
        if notes and notes.get(v.variant):
            lines.append(f"    ({notes[v.variant]})")
        lines += [f"    {e}" for e in v.evidence]
    n = sum(v.caught for v in verdicts)
    lines.append(f"mutants: {n} of {len(verdicts)} caught")
    return "\n".join(lines)


def tally(runs: list[list[Verdict]], notes: dict[str, str] | None = None) -> str:
    """The verdicts of the same mutants over repeated runs (make mutants
    REPEAT=N): a race mutant is caught by chance, and how often it is
    caught within race_test's bound is the measure of that test.  Each
    mutant's line says in how many runs it was caught; the evidence of
    its first miss (or, caught every time, of its first run) follows."""
    lines = []
    names = [v.variant for v in runs[0]]
    for name in names:
        mine = [next(v for v in run if v.variant == name) for run in runs]
        caught = sum(v.caught for v in mine)
        untested = sum(v.evidence[:1] != () and v.evidence[0].startswith("not tested")
                       for v in mine)
        lines.append(f"{name:<26} caught in {caught} of {len(mine)} runs"
                     + (f" ({untested} not tested)" if untested else ""))
        if notes and notes.get(name):
            lines.append(f"    ({notes[name]})")
        missed = [i for i, v in enumerate(mine) if not v.caught]
        shown = missed[0] if missed else 0
        lines += [f"    run {shown + 1}: {e}" for e in mine[shown].evidence]
    always = sum(all(next(v for v in run if v.variant == n).caught for run in runs)
                 for n in names)
    lines.append(f"mutants: {always} of {len(names)} caught in all {len(runs)} runs")
    return "\n".join(lines)
