// Command broken does not compile, on purpose: the local cloud must refuse
// to start and name it.
package main

func main() {
	var n int = "not a number"
	_ = n
}
