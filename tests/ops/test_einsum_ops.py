"""einsum (ops/einsum_ops.py) against NumPy's einsum, and the equations it refuses."""

import numpy as np
import pytest

import staticgrad as sg

RNG = np.random.default_rng(14)
A, B, C = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 4)), RNG.normal(size=(2, 3, 4))


@pytest.mark.parametrize("equation, operands", [
    ("ij,jk->ik", (A, B)), ("ij,jk", (A, B)), ("ij->ji", (A,)), ("ij->", (A,)),
    ("bij,jk->bik", (C[:, :, :3], B)), ("ij,ij->i", (A, A)), ("i,j->ij", (A[0], B[0])),
    ("ijk->kj", (C,)), (" ij , jk -> ik ", (A, B))])
def test_against_numpy(g, equation, operands):
    got = sg.Session().run(sg.einsum(equation, *[sg.constant(o) for o in operands]))
    np.testing.assert_allclose(got, np.einsum(equation.replace(" ", ""), *operands),
                               rtol=1e-12)


def test_what_it_refuses(g):
    a = sg.constant(A)
    for bad, why in [("ii->i", "repeats a letter"), ("...ij->ij", "'...' is not offered"),
                     ("ij->kk", "at most once"), ("ij->k", "at most once"),
                     ("ij;print(1)", "is not letters")]:
        with pytest.raises(ValueError, match=rf"einsum at \S*test_einsum_ops.py:\d+: .*{why}"):
            sg.einsum(bad, a)
    with pytest.raises(ValueError, match=r"letter 'j' stands for sizes 3 and 2"):
        sg.einsum("ij,jk->ik", a, a)
    with pytest.raises(ValueError, match=r"names 2 operands, it is given 1"):
        sg.einsum("ij,jk->ik", a)
