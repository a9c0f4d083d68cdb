// common: helpers shared by the kernel templates; included by NVRTC as a header.
#pragma once
