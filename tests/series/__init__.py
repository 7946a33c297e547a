"""The series as a whole: every notebook has its parts, and the environment and licences agree."""
