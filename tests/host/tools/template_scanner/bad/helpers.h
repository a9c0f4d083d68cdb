// helpers: a header a template may not include.
#pragma once
