// reference: placeholder until the CPU reference lands.
#include "reference/reference.hpp"
