#include "lib.h"
int fa(int x) { return x + 1; }
