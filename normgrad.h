#pragma once
// normgrad: the umbrella header. #include <normgrad/normgrad.h> brings in the whole public API.

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/generator.h"
#include "core/memory.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "core/threads.h"
#include "autograd/grad_mode.h"
#include "autograd/gradcheck.h"
#include "autograd/graph_dot.h"
#include "autograd/node.h"
#include "autograd/ops.h"
#include "nn/functional.h"
#include "optim/sgd.h"
