// Stylesheets are imported for their effect; Vite bundles them into the app's CSS file.
declare module '*.css';
