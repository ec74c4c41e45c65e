#include "lib.h"
int main(void) { return fa(1) + fb(2) + fc(3) == 11 ? 0 : 1; }
