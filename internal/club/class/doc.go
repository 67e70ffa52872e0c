// Package class is the class aggregate: a teacher's lesson with a fixed number
// of seats. Seats are counted on the class (seats taken against capacity);
// taking one is the first write of an enrollment and the only place where
// overbooking could happen, so the rule lives in [Class.TakeSeat] and adapters
// express the same rule as a conditional write in the enrollment transaction.
//
// [New] validates input and names the offending field; [FromSnapshot]
// rehydrates a stored class without validation. A Class is a value: methods
// that change it take a pointer, and copies are independent.
package class
