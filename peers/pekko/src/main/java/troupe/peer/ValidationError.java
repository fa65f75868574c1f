// A run whose result is wrong: reported and the process exits with status 1.
package troupe.peer;

final class ValidationError extends RuntimeException {
    ValidationError(String message) {
        super(message);
    }
}
