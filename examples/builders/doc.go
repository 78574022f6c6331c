// Package builders holds the graph builders behind the mgla examples
// (examples/gp, examples/sharded and examples/eigen), so that the examples'
// graphs can be tested at small sizes (see graph_test.go at the repository
// root) and reused: Gaussian-process regression with learned
// hyperparameters, a pipeline of solves, an inverse and an eigensolve on one
// sharded matrix, spectral embedding of a graph Laplacian, the -mesh flag
// parser and the tile map of the block-cyclic layout.
//
// It may import the root package mgla, ops, sharding and cyclic; only the
// examples and the root package's tests import it.
package builders
