"""staticgrad: a define-then-run compiler for numerical graphs, with TF1's API.

    import staticgrad as sg          # or: import staticgrad as tf
    x = sg.placeholder(sg.float32, [None, 3])
    w = sg.Variable([[1.0], [2.0], [3.0]])
    y = sg.matmul(x, w)
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        print(sess.run(y, {x: [[1, 1, 1]]}))
        print(sess.source(y, {x: [[1, 1, 1]]}))   # the generated NumPy code
"""

from __future__ import annotations

from . import errors, runtime  # noqa: F401
from .autodiff import (NoGradient, NotDifferentiable, RegisterGradient,  # noqa: F401
                       custom_gradient, gradients, hessians, jacobian)
from .dtypes import (DType, as_dtype, bool_, double, float16, float32, float64, half,  # noqa: F401
                     int8, int16, int32, int64, uint8)
from .graph import (Graph, GraphKeys, Operation, Tensor, add_to_collection,  # noqa: F401
                    add_to_collections, control_dependencies, get_collection,
                    get_collection_ref, get_default_graph, name_scope, reset_default_graph)
from .ops import nn_ops as nn  # noqa: F401
from .ops.array_ops import (broadcast_to, expand_dims, fill, ones, ones_like,  # noqa: F401
                            rank, reshape, shape, size, squeeze, transpose, zeros, zeros_like)
from .ops.indexing_ops import (eye, gather, lin_space, linspace, one_hot, range,  # noqa: F401
                               slice)
from .ops.join_ops import concat, pad, split, stack, tile, unstack  # noqa: F401
from .ops.math_ops import (abs, add, add_n, cast, clip_by_value, cos, div, divide,  # noqa: F401
                           elu, equal, erf, exp, expm1, floor, floor_div, floordiv,
                           floormod, greater, greater_equal, identity, leaky_relu, less,
                           less_equal, log, log1p, logical_and, logical_not, logical_or,
                           matmul, maximum, minimum, mod, multiply, negative, not_equal, pow,
                           reciprocal, relu, relu6, rsqrt, sigmoid, sign, sin, softplus, sqrt,
                           square, stop_gradient, subtract, tan, tanh, to_float, truediv, where)
from .ops.reduction_ops import (arg_max, arg_min, argmax, argmin, reduce_all,  # noqa: F401
                                reduce_any, reduce_max, reduce_mean, reduce_min, reduce_prod,
                                reduce_sum)
from .ops.registry import constant, convert_to_tensor  # noqa: F401
from .ops.state_ops import (assign, assign_add, assign_sub, group, no_op,  # noqa: F401
                            placeholder, placeholder_with_default, random_normal,
                            random_uniform, set_random_seed, truncated_normal)
from .ops.state_ops import tuple_ as tuple  # noqa: F401, A001 - TF1's name
from .session import InteractiveSession, Session, get_default_session  # noqa: F401
from .shapes import Dimension, TensorShape  # noqa: F401
from .variables import (Variable, all_variables, global_variables,  # noqa: F401
                        global_variables_initializer, initialize_all_variables,
                        local_variables, trainable_variables, variables_initializer)

newaxis = None
__version__ = "0.1.0"
