import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

/**
 * One build, two apps (DESIGN "Web"): web/dist/mssp/index.html, web/dist/portal/index.html and
 * their shared, content-hashed scripts and styles under web/dist/assets/, which svc serves at
 * /assets/ (src/http/web/spa.ts). The manifest lets web/budget.ts find each app's initial JS.
 */
export default defineConfig({
  root,
  base: '/',
  publicDir: false,
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    manifest: true,
    sourcemap: false,
    rollupOptions: {
      input: {
        mssp: fileURLToPath(new URL('mssp/index.html', import.meta.url)),
        portal: fileURLToPath(new URL('portal/index.html', import.meta.url)),
      },
    },
  },
});
