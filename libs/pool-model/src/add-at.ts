/** array[index] += delta, spelled so that noUncheckedIndexedAccess accepts it. */
export function addAt(array: Float64Array, index: number, delta: number): void {
  array[index] = (array[index] as number) + delta;
}
