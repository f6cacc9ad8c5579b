import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.cache/**', 'artifacts/**', 'e2e/backend/**/*.go'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  // The launcher is plain JavaScript run by Node.js.
  { files: ['bin/**/*.js'], languageOptions: { globals: { process: 'readonly', URL: 'readonly' } } },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
)
