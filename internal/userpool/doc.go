// Package userpool is the adapter over the stack's Cognito user pool.
//
// [Directory] is the e-mail directory of the enrollment service
// (enrollment.EmailDirectory): Cognito puts the email claim in ID tokens
// only, so a caller using an access token has no address in its claims,
// and a student's first profile takes the verified address from the pool
// instead (AdminGetUser; its sub is a username the pool accepts). It never
// fails an enrollment: a user without a verified address, an unknown user
// or an unreachable pool give "" and are logged.
//
// [TestUsers] makes users for the end-to-end suite on a stack that trusts
// its own pool (LocalStack, AWS), where the local cloud's issuer does not
// exist: AdminCreateUser with a verified address and no invitation,
// AdminSetUserPassword (permanent), AdminAddUserToGroup per role, and
// AdminInitiateAuth (ADMIN_USER_PASSWORD_AUTH) on the stack's test app
// client, which only a stack deployed with EnableTestUsers=true has.
//
// Both are safe for concurrent use; the API interface is the subset of the
// Cognito client they call.
package userpool
