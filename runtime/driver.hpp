// driver: placeholder (helper writes it).
#pragma once
