// Forwarding header: the quant module lives in native/quant/ (see quant/quant.h).
#pragma once
#include "quant/quant.h"
