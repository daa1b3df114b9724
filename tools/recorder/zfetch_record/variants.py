"""A module forward that changed between passes, written as one program with ``when:`` conditions
(docs/scenario-format.md): the ops every variant ran stay unconditional, the others get a condition on
one field of the pass context (state.pass_context) whose values tell the variants apart.

Each variant is ``{"ops": [...], "values": {field: [values of the passes that ran it]}}``
(program.ProgramObserver.changed_variants). The variants are aligned op by op (a longest common
subsequence, one variant after another), so the merged program run under each pass's context is
exactly the ops that pass ran, in its order."""

# Tried in this order: the first field whose values differ between every two variants is used.
# micro_step first (a layer skipped in some micro-steps), then the phase (an eval-only branch), the
# engine (a forward that changed after a restart), and the optimizer step last (its lists are long).
FIELDS = ("micro_step", "phase", "engine", "step")
# The condition's key of each field (the micro-step within the accumulation window has its own name).
CONDITION_KEYS = {"micro_step": "window_micro_step"}


def separating_field(variants):
    """The first of FIELDS whose value sets are pairwise disjoint across ``variants``, else None."""
    for field in FIELDS:
        seen = set()
        for variant in variants:
            values = set(variant["values"].get(field, ()))
            if not values or values & seen:
                break
            seen |= values
        else:
            return field
    return None


def _align(merged, ops, index):
    """``merged`` ([op, set of variant indices] in order) with variant ``index``'s ``ops`` added: the
    longest common subsequence is shared, the rest inserted in place (merged's own ops first)."""
    m, n = len(merged), len(ops)
    # lcs[i][j]: the longest common subsequence of merged[i:] and ops[j:]
    lcs = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(m - 1, -1, -1):
        for j in range(n - 1, -1, -1):
            if merged[i][0] == ops[j]:
                lcs[i][j] = lcs[i + 1][j + 1] + 1
            else:
                lcs[i][j] = max(lcs[i + 1][j], lcs[i][j + 1])
    out, i, j = [], 0, 0
    while i < m or j < n:
        if i < m and j < n and merged[i][0] == ops[j]:
            out.append([merged[i][0], merged[i][1] | {index}])
            i, j = i + 1, j + 1
        elif i < m and (j == n or lcs[i + 1][j] >= lcs[i][j + 1]):
            out.append(merged[i])
            i += 1
        else:
            out.append([ops[j], {index}])
            j += 1
    return out


def merged_program(variants):
    """One program that runs each variant's ops in the passes that ran it, or None when no field of
    the pass context tells the variants apart (the caller writes the first and says so)."""
    field = separating_field(variants)
    if field is None:
        return None
    merged = []
    for index, variant in enumerate(variants):
        merged = _align(merged, variant["ops"], index)
    program = []
    for op, members in merged:
        if len(members) == len(variants):
            program.append(op)
            continue
        values = sorted({value for i in members for value in variants[i]["values"][field]})
        if field == "phase":
            if len(values) != 1:  # `phase:` takes one value
                return None
            condition = values[0]
        else:
            condition = values
        program.append(dict(op, when={CONDITION_KEYS.get(field, field): condition}))
    return program
