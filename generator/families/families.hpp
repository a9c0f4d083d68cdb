// families: the singleton of each kernel family, registered in generator/family.cpp.
#pragma once

#include "generator/family.hpp"

namespace convgen {

const Family& direct_family();
const Family& igemm_family();

}  // namespace convgen
